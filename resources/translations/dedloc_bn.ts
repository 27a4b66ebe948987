<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="bn_BD">
<context>
    <name>QGnomeTheme</name>
    <message>
        <location filename="../../ui/Language.cpp" line="19"/>
        <source>&amp;OK</source>
        <translation>ঠিক আছে (&amp;O)</translation>
    </message>
    <message>
        <location filename="../../ui/Language.cpp" line="20"/>
        <source>&amp;Cancel</source>
        <translation>বাতিল (&amp;C)</translation>
    </message>
    <message>
        <location filename="../../ui/Language.cpp" line="20"/>
        <source>&amp;Close</source>
        <translation>বন্ধ করুন (&amp;C)</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../../ui/Format.cpp" line="42"/>
        <source>unknown</source>
        <translation>অজানা</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="45"/>
        <source>%1 s</source>
        <translation>%1 সে.</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="47"/>
        <source>%1 min</source>
        <translation>%1 মিনিট</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="49"/>
        <source>%1 h %2 min</source>
        <translation>%1 ঘণ্টা %2 মিনিট</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="50"/>
        <source>%1 d %2 h</source>
        <translation>%1 দিন %2 ঘণ্টা</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="55"/>
        <source>1 trainer</source>
        <translation>১ জন প্রশিক্ষক</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="55"/>
        <source>%1 trainers</source>
        <translation>%1 জন প্রশিক্ষক</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="56"/>
        <source>1 monitor</source>
        <translation>১টি মনিটর</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="56"/>
        <source>%1 monitors</source>
        <translation>%1টি মনিটর</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="57"/>
        <source>%1, %2 auxiliary, %3 (%4 in client mode)</source>
        <translation>%1, %2টি সহায়ক, %3 (%4টি ক্লায়েন্ট মোডে)</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="80"/>
        <source>; %1 peers on another manifest version</source>
        <translation>; ম্যানিফেস্টের অন্য সংস্করণে %1টি পিয়ার</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="75"/>
        <source>paused</source>
        <translation>বিরতিতে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="78"/>
        <source>training</source>
        <translation>প্রশিক্ষণ দিচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="80"/>
        <source>averaging</source>
        <translation>গড় করছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="82"/>
        <source>recording, reducing</source>
        <translation>রেকর্ড করছে, গড়ে অংশ নিচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="82"/>
        <source>recording</source>
        <translation>রেকর্ড করছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="91"/>
        <source>Idle</source>
        <translation>নিষ্ক্রিয়</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="93"/>
        <source>Connecting</source>
        <translation>সংযোগ হচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="95"/>
        <source>Syncing</source>
        <translation>সিঙ্ক হচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="97"/>
        <source>Training</source>
        <translation>প্রশিক্ষণ চলছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="99"/>
        <source>Averaging</source>
        <translation>গড় করা হচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="101"/>
        <source>Paused</source>
        <translation>বিরতিতে</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="103"/>
        <source>Error</source>
        <translation>ত্রুটি</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="105"/>
        <source>Stopped</source>
        <translation>বন্ধ</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="115"/>
        <source>Not joined yet.</source>
        <translation>এখনও যোগ দেওয়া হয়নি।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="117"/>
        <source>Looking for the swarm...</source>
        <translation>সোয়ার্ম খোঁজা হচ্ছে...</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="118"/>
        <source>Looking for the swarm: %1.</source>
        <translation>সোয়ার্ম খোঁজা হচ্ছে: %1।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="120"/>
        <source>Downloading the latest model state from another peer.</source>
        <translation>অন্য একটি পিয়ার থেকে মডেলের সর্বশেষ অবস্থা ডাউনলোড হচ্ছে।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="122"/>
        <source>Computing gradients on %1.</source>
        <translation>%1-এ গ্রেডিয়েন্ট গণনা করা হচ্ছে।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="130"/>
        <source>%1 %2.</source>
        <extracomment>%1: the sentence before (&quot;Computing gradients on ...&quot;), %2: how the peer is reached, in the core&apos;s English words (&quot;Client mode: ...&quot;)</extracomment>
        <translation>%1 %2।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="133"/>
        <source>Averaging gradients with the other peers.</source>
        <translation>অন্য পিয়ারদের সঙ্গে গ্রেডিয়েন্টের গড় করা হচ্ছে।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="135"/>
        <source>Paused.</source>
        <translation>বিরতিতে।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="135"/>
        <source>Paused: %1.</source>
        <translation>বিরতিতে: %1।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="137"/>
        <source>Stopped by an error. See the log below; Resume tries again.</source>
        <translation>একটি ত্রুটির কারণে থেমে গেছে। নিচের লগ দেখুন; &quot;আবার চালু করুন&quot; চাপলে আবার চেষ্টা করা হবে।</translation>
    </message>
    <message>
        <location filename="../../ui/Format.cpp" line="140"/>
        <source>Left the swarm.</source>
        <translation>সোয়ার্ম ছেড়ে দেওয়া হয়েছে।</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="15"/>
        <source>cannot read %1: %2</source>
        <translation>%1 পড়া যাচ্ছে না: %2</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="20"/>
        <source>%1 is not a contribution record</source>
        <translation>%1 অবদানের রেকর্ড নয়</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="25"/>
        <location filename="../../ui/ContributionExport.cpp" line="42"/>
        <source>cannot write %1: %2</source>
        <translation>%1 লেখা যাচ্ছে না: %2</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="52"/>
        <source>no monitor has answered yet</source>
        <translation>এখনো কোনো মনিটর উত্তর দেয়নি</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="53"/>
        <source>%1 samples in %2 steps, through step %3</source>
        <translation>%2টি ধাপে %1টি নমুনা, ধাপ %3 পর্যন্ত</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="57"/>
        <source>%1: the monitor missed %2 of your steps (%3 samples)</source>
        <translation>%1: মনিটর আপনার %2টি ধাপ পায়নি (%3টি নমুনা)</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="60"/>
        <source>%1: differs from your record (%2 samples)</source>
        <translation>%1: আপনার রেকর্ডের সঙ্গে মেলে না (%2টি নমুনা)</translation>
    </message>
    <message>
        <location filename="../../ui/ContributionExport.cpp" line="61"/>
        <source>%1: matches your record</source>
        <translation>%1: আপনার রেকর্ডের সঙ্গে মেলে</translation>
    </message>
</context>
<context>
    <name>QPlatformTheme</name>
    <message>
        <location filename="../../ui/Language.cpp" line="18"/>
        <source>OK</source>
        <translation>ঠিক আছে</translation>
    </message>
    <message>
        <location filename="../../ui/Language.cpp" line="18"/>
        <source>Cancel</source>
        <translation>বাতিল</translation>
    </message>
    <message>
        <location filename="../../ui/Language.cpp" line="19"/>
        <source>Close</source>
        <translation>বন্ধ করুন</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::ContributionPanel</name>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="15"/>
        <source>Your contribution</source>
        <translation>আপনার অবদান</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="16"/>
        <source>Export record...</source>
        <translation>রেকর্ড রপ্তানি...</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="20"/>
        <source>&lt;b&gt;This session&lt;/b&gt;</source>
        <translation>&lt;b&gt;এই সেশনে&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="21"/>
        <source>&lt;b&gt;All time&lt;/b&gt;</source>
        <translation>&lt;b&gt;সব মিলিয়ে&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="22"/>
        <source>Samples</source>
        <translation>নমুনা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="22"/>
        <source>Compute time</source>
        <translation>গণনার সময়</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="22"/>
        <source>Global steps taken part in</source>
        <translation>যতগুলো সামগ্রিক ধাপে অংশ নিয়েছেন</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="32"/>
        <source>Share of the swarm</source>
        <translation>সোয়ার্মে আপনার অংশ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="34"/>
        <source>Your speed</source>
        <translation>আপনার গতি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="37"/>
        <source>Computing</source>
        <translation>গণনায় কাটানো সময়</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="42"/>
        <source>Recorded by the monitor</source>
        <translation>মনিটরের রেকর্ড</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="49"/>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="53"/>
        <source>Export the contribution record</source>
        <translation>অবদানের রেকর্ড রপ্তানি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="50"/>
        <source>CSV files (*.csv)</source>
        <translation>CSV ফাইল (*.csv)</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="67"/>
        <source>%1 samples/s</source>
        <translation>%1 নমুনা/সে.</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="69"/>
        <source>not known yet</source>
        <translation>এখনও জানা নেই</translation>
    </message>
    <message>
        <location filename="../../ui/panels/ContributionPanel.cpp" line="70"/>
        <source>%1 % of the time</source>
        <translation>সময়ের %1 %</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::GpuPanel</name>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="26"/>
        <location filename="../../ui/panels/GpuPanel.cpp" line="112"/>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="27"/>
        <location filename="../../ui/panels/GpuPanel.cpp" line="116"/>
        <source>Usage</source>
        <translation>ব্যবহার</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="112"/>
        <location filename="../../ui/panels/GpuPanel.cpp" line="116"/>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="113"/>
        <source>Training on CPU</source>
        <translation>CPU-তে প্রশিক্ষণ চলছে</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="114"/>
        <source>No GPU chosen: training on the CPU</source>
        <translation>কোনো GPU বাছা হয়নি: CPU-তে প্রশিক্ষণ চলছে</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="115"/>
        <source>Training on %1</source>
        <translation>%1-এ প্রশিক্ষণ চলছে</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="79"/>
        <source>%p% of %1 CPUs</source>
        <translation>%1টি CPU-র %p%</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuPanel.cpp" line="79"/>
        <source>unknown</source>
        <translation>অজানা</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::GpuRow</name>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="16"/>
        <source>Train on GPU %1</source>
        <translation>GPU %1-এ প্রশিক্ষণ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="22"/>
        <source>Untick to keep this GPU for yourself: the training leaves it at its next micro-batch.</source>
        <translation>GPU-টি নিজের কাজের জন্য রাখতে টিক তুলে দিন: পরের মাইক্রো-ব্যাচ থেকে প্রশিক্ষণ এটি ছেড়ে দেবে।</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="30"/>
        <source>Usage</source>
        <translation>ব্যবহার</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="31"/>
        <source>Memory</source>
        <translation>মেমরি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="32"/>
        <source>Temperature</source>
        <translation>তাপমাত্রা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="33"/>
        <source>Power</source>
        <translation>বিদ্যুৎ খরচ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="34"/>
        <source>Fan</source>
        <translation>ফ্যান</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="47"/>
        <source>unknown</source>
        <translation>অজানা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/GpuRow.cpp" line="49"/>
        <source>%1 of %2</source>
        <translation>%2-এর মধ্যে %1</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::HeatLimitsBox</name>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="27"/>
        <source>Heat and noise</source>
        <translation>তাপ ও শব্দ</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="29"/>
        <source>no limit</source>
        <translation>সীমা নেই</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="30"/>
        <location filename="../../ui/HeatLimitsBox.cpp" line="31"/>
        <location filename="../../ui/HeatLimitsBox.cpp" line="34"/>
        <source> °C</source>
        <translation> °C</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="32"/>
        <source> W</source>
        <translation> W</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="33"/>
        <source> %</source>
        <translation> %</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="36"/>
        <source> % of the time</source>
        <translation> % সময়</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="40"/>
        <source> s</source>
        <translation> সেকেন্ড</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="43"/>
        <source>Pause when the GPU is hotter than</source>
        <translation>বিরতি দিন যখন GPU-এর তাপমাত্রা ছাড়ায়</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="44"/>
        <source>... the CPU is hotter than</source>
        <translation>... CPU-এর তাপমাত্রা ছাড়ায়</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="45"/>
        <source>... the GPU draws more than</source>
        <translation>... GPU-এর বিদ্যুৎ খরচ ছাড়ায়</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="46"/>
        <source>... the GPU&apos;s fan runs faster than</source>
        <translation>... GPU-এর ফ্যানের গতি ছাড়ায়</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="47"/>
        <source>after staying above it for</source>
        <translation>সীমার ওপরে এতক্ষণ থাকার পর</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="48"/>
        <source>resume once it is cooler by</source>
        <translation>এতটা ঠান্ডা হলে আবার চালু</translation>
    </message>
    <message>
        <location filename="../../ui/HeatLimitsBox.cpp" line="49"/>
        <source>Train at most</source>
        <translation>সর্বোচ্চ প্রশিক্ষণ</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::JoinPage</name>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="15"/>
        <source>Join</source>
        <translation>যোগ দিন</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="16"/>
        <source>Join again automatically next time</source>
        <translation>পরের বার নিজে থেকেই আবার যোগ দিন</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="23"/>
        <source>&lt;h2&gt;Donate your idle GPU to %1&lt;/h2&gt;</source>
        <translation>&lt;h2&gt;আপনার অব্যবহৃত GPU দান করুন: %1&lt;/h2&gt;</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="35"/>
        <source>Run</source>
        <translation>প্রকল্প</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="35"/>
        <source>%1 (%2)</source>
        <translation>%1 (%2)</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="36"/>
        <source>Lead</source>
        <translation>পরিচালক</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="37"/>
        <source>Model</source>
        <translation>মডেল</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="38"/>
        <source>Data</source>
        <translation>ডেটা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="39"/>
        <source>Signature</source>
        <translation>স্বাক্ষর</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="41"/>
        <source>Access</source>
        <translation>প্রবেশাধিকার</translation>
    </message>
    <message>
        <location filename="../../ui/panels/JoinPage.cpp" line="50"/>
        <source>You can pause at any time from the window or the tray icon. The app pauses by itself when a game uses the GPU.</source>
        <translation>উইন্ডো বা ট্রে আইকন থেকে যেকোনো সময় বিরতি দিতে পারেন। কোনো গেম GPU ব্যবহার করলে অ্যাপটি নিজে থেকেই থেমে যায়।</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::LogModel</name>
    <message>
        <location filename="../../ui/LogModel.cpp" line="13"/>
        <source>Debug</source>
        <translation>ডিবাগ</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="15"/>
        <source>Info</source>
        <translation>তথ্য</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="17"/>
        <source>Warning</source>
        <translation>সতর্কতা</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="19"/>
        <source>Error</source>
        <translation>ত্রুটি</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="132"/>
        <source>Time</source>
        <translation>সময়</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="132"/>
        <source>Level</source>
        <translation>স্তর</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="132"/>
        <source>Category</source>
        <translation>বিভাগ</translation>
    </message>
    <message>
        <location filename="../../ui/LogModel.cpp" line="133"/>
        <source>Message</source>
        <translation>বার্তা</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::LogPanel</name>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="39"/>
        <source>Log</source>
        <translation>লগ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="49"/>
        <source>Debug</source>
        <translation>ডিবাগ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="49"/>
        <source>Info</source>
        <translation>তথ্য</translation>
    </message>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="49"/>
        <source>Warning</source>
        <translation>সতর্কতা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="49"/>
        <source>Error</source>
        <translation>ত্রুটি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/LogPanel.cpp" line="60"/>
        <source>Show from level</source>
        <translation>ন্যূনতম স্তর</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::MainWindow</name>
    <message>
        <location filename="../../ui/MainWindow.cpp" line="32"/>
        <source>DeDLOC Desktop - %1</source>
        <translation>DeDLOC ডেস্কটপ - %1</translation>
    </message>
    <message>
        <location filename="../../ui/MainWindow.cpp" line="34"/>
        <source>&amp;DeDLOC</source>
        <translation>&amp;DeDLOC</translation>
    </message>
    <message>
        <location filename="../../ui/MainWindow.cpp" line="35"/>
        <source>&amp;Settings...</source>
        <translation>সেটিংস (&amp;S)...</translation>
    </message>
    <message>
        <location filename="../../ui/MainWindow.cpp" line="37"/>
        <source>&amp;Quit</source>
        <translation>প্রস্থান (&amp;Q)</translation>
    </message>
    <message>
        <location filename="../../ui/MainWindow.cpp" line="135"/>
        <source>This desktop has no system tray, so the window stays open while DeDLOC trains. Pause with the button above; quit with DeDLOC &gt; Quit.</source>
        <translation>এই ডেস্কটপে কোনো সিস্টেম ট্রে নেই, তাই DeDLOC প্রশিক্ষণ চালানোর সময় উইন্ডোটি খোলা থাকবে। ওপরের বোতাম দিয়ে বিরতি দিন; বন্ধ করতে DeDLOC &gt; প্রস্থান বেছে নিন।</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::Notifier</name>
    <message>
        <location filename="../../ui/Notifier.cpp" line="47"/>
        <source>Your access token has expired</source>
        <translation>আপনার অ্যাক্সেস টোকেনের মেয়াদ শেষ</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="48"/>
        <source>The run no longer accepts this computer. Ask the run&apos;s lead for a new token.</source>
        <translation>এই রান আর এই কম্পিউটারকে গ্রহণ করছে না। রানের পরিচালকের কাছে নতুন টোকেন চেয়ে নিন।</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="51"/>
        <source>Your access token expires soon</source>
        <translation>আপনার অ্যাক্সেস টোকেনের মেয়াদ শিগগিরই শেষ হবে</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="52"/>
        <source>It expires in %1. Ask the run&apos;s lead for a new token to keep training.</source>
        <translation>মেয়াদ শেষ হবে %1 পরে। প্রশিক্ষণ চালিয়ে যেতে রানের পরিচালকের কাছে নতুন টোকেন চেয়ে নিন।</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="63"/>
        <source>DeDLOC stopped training</source>
        <translation>DeDLOC প্রশিক্ষণ বন্ধ করেছে</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="77"/>
        <source>Thank you!</source>
        <translation>ধন্যবাদ!</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="77"/>
        <source>Your computer has trained the model on %1 samples.</source>
        <translation>আপনার কম্পিউটার %1টি নমুনায় মডেলটিকে প্রশিক্ষণ দিয়েছে।</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="88"/>
        <source>DeDLOC paused</source>
        <translation>DeDLOC বিরতিতে গেছে</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="93"/>
        <source>DeDLOC trains again</source>
        <translation>DeDLOC আবার প্রশিক্ষণ দিচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/Notifier.cpp" line="93"/>
        <source>The reason to pause has gone.</source>
        <translation>বিরতির কারণটি আর নেই।</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::PeersPanel</name>
    <message>
        <location filename="../../ui/panels/PeersPanel.cpp" line="13"/>
        <source>Peers</source>
        <translation>পিয়ার</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::PeersTableModel</name>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="13"/>
        <source>trainer</source>
        <translation>প্রশিক্ষক</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="15"/>
        <source>auxiliary</source>
        <translation>সহায়ক</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="17"/>
        <source>monitor</source>
        <translation>মনিটর</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="65"/>
        <source>client mode</source>
        <translation>ক্লায়েন্ট মোড</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="65"/>
        <source>reachable</source>
        <translation>সংযোগযোগ্য</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="75"/>
        <source>%1 s ago</source>
        <translation>%1 সে. আগে</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="85"/>
        <source>Peer</source>
        <translation>পিয়ার</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="85"/>
        <source>Role</source>
        <translation>ভূমিকা</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="85"/>
        <source>Reachability</source>
        <translation>সংযোগযোগ্যতা</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="86"/>
        <source>State</source>
        <translation>অবস্থা</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="86"/>
        <source>Epoch</source>
        <translation>ইপক</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="86"/>
        <source>Samples</source>
        <translation>নমুনা</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="87"/>
        <source>Samples/s</source>
        <translation>নমুনা/সে.</translation>
    </message>
    <message>
        <location filename="../../ui/PeersTableModel.cpp" line="87"/>
        <source>Last report</source>
        <translation>শেষ খবর</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::RunInfo</name>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="13"/>
        <source>not checked</source>
        <translation>যাচাই করা হয়নি</translation>
    </message>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="24"/>
        <source>ALBERT %1 (hidden %2, %3 layers, vocabulary %4), target batch %5 samples</source>
        <translation>ALBERT %1 (হিডেন আকার %2, %3টি লেয়ার, শব্দভান্ডার %4), লক্ষ্য ব্যাচ %5টি নমুনা</translation>
    </message>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="34"/>
        <source>closed: only volunteers with an access token from the lead</source>
        <translation>বন্ধ: শুধু পরিচালকের দেওয়া প্রবেশ-টোকেন আছে এমন স্বেচ্ছাসেবকেরা</translation>
    </message>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="36"/>
        <source>open: anyone may join (every link is encrypted)</source>
        <translation>উন্মুক্ত: যে কেউ যোগ দিতে পারেন (প্রতিটি সংযোগ এনক্রিপ্ট করা)</translation>
    </message>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="50"/>
        <source>closed: only volunteers with an access token from the lead. Your token: %1</source>
        <translation>বন্ধ: শুধু পরিচালকের দেওয়া প্রবেশ-টোকেন আছে এমন স্বেচ্ছাসেবকেরা। আপনার টোকেন: %1</translation>
    </message>
    <message>
        <location filename="../../ui/RunInfo.cpp" line="54"/>
        <source>closed: only volunteers with an access token from the lead. You have none yet: send your peer key (dedloc --print-peer-key) to the lead and save the token you get as %1</source>
        <translation>বন্ধ: শুধু পরিচালকের দেওয়া প্রবেশ-টোকেন আছে এমন স্বেচ্ছাসেবকেরা। আপনার এখনও কোনো টোকেন নেই: আপনার পিয়ার কী (dedloc --print-peer-key) পরিচালককে পাঠান এবং যে টোকেন পাবেন তা %1 হিসেবে সংরক্ষণ করুন</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::SettingsDialog</name>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="42"/>
        <source>DeDLOC settings</source>
        <translation>DeDLOC সেটিংস</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="46"/>
        <source>Limits (0 = no limit)</source>
        <translation>সীমা (০ = সীমা নেই)</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="61"/>
        <location filename="../../ui/SettingsDialog.cpp" line="65"/>
        <source> KiB/s</source>
        <translation> KiB/s</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="67"/>
        <source>CPU threads</source>
        <translation>CPU থ্রেড</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="68"/>
        <source>Share of GPU memory</source>
        <translation>GPU মেমরির অংশ</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="69"/>
        <source>Micro-batch size</source>
        <translation>মাইক্রো-ব্যাচের আকার</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="70"/>
        <source>Upload</source>
        <translation>আপলোড</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="71"/>
        <source>Download</source>
        <translation>ডাউনলোড</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="73"/>
        <source>Pause by itself</source>
        <translation>নিজে থেকে বিরতি</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="75"/>
        <source>when another program uses the GPU for graphics (games)</source>
        <translation>অন্য কোনো প্রোগ্রাম গ্রাফিক্সের জন্য GPU ব্যবহার করলে (গেম)</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="77"/>
        <source>when a program is full screen (games, films)</source>
        <translation>কোনো প্রোগ্রাম পূর্ণ পর্দায় চললে (গেম, সিনেমা)</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="81"/>
        <source>one program name per line, e.g. blender</source>
        <translation>প্রতি লাইনে একটি প্রোগ্রামের নাম, যেমন blender</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="87"/>
        <source>on battery power</source>
        <translation>ব্যাটারিতে চললে</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="89"/>
        <source>outside this weekly schedule:</source>
        <translation>এই সাপ্তাহিক সময়সূচির বাইরে:</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="93"/>
        <source>one window per line, e.g.
Mon-Fri 18:00-08:00
Sat,Sun all day</source>
        <translation>প্রতি লাইনে একটি সময়-পরিসর (দিন ও সময় ইংরেজিতে), যেমন
Mon-Fri 18:00-08:00
Sat,Sun all day</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="106"/>
        <source>while I use the computer (where idle time is known)</source>
        <translation>আমি কম্পিউটার ব্যবহার করার সময় (যেখানে নিষ্ক্রিয় সময় জানা যায়)</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="110"/>
        <source> s without input</source>
        <translation> সেকেন্ড কোনো ইনপুট না থাকলে</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="114"/>
        <source> s</source>
        <translation> সেকেন্ড</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="119"/>
        <source>when these run</source>
        <translation>এগুলো চললে</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="125"/>
        <source>idle means</source>
        <translation>নিষ্ক্রিয় মানে</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="126"/>
        <source>resume after quiet for</source>
        <translation>এতক্ষণ শান্ত থাকলে আবার চালু</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="127"/>
        <source>&quot;Pause until tomorrow&quot; ends at</source>
        <translation>&quot;আগামীকাল পর্যন্ত বিরতি&quot; শেষ হয়</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="129"/>
        <source>Join the run automatically when the app starts</source>
        <translation>অ্যাপ চালু হলে নিজে থেকেই প্রকল্পে যোগ দিন</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="131"/>
        <source>Start DeDLOC in the tray when I log in, and join</source>
        <translation>লগ ইন করলে DeDLOC ট্রেতে চালু করুন এবং যোগ দিন</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="136"/>
        <source>the system&apos;s language</source>
        <translation>সিস্টেমের ভাষা</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="140"/>
        <source>Notify me when DeDLOC pauses by itself, resumes or stops with an error</source>
        <translation>DeDLOC নিজে থেকে বিরতি নিলে, আবার চালু হলে বা ত্রুটিতে থামলে আমাকে জানান</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="143"/>
        <source>... and each time my computer has trained on 10 000 more samples</source>
        <translation>... এবং আমার কম্পিউটার প্রতিবার আরও ১০ ০০০টি নমুনায় প্রশিক্ষণ দিলে</translation>
    </message>
    <message>
        <location filename="../../ui/SettingsDialog.cpp" line="161"/>
        <source>Language (after a restart):</source>
        <translation>ভাষা (আবার চালু করার পর):</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::StatePanel</name>
    <message>
        <location filename="../../ui/panels/StatePanel.cpp" line="12"/>
        <source>State</source>
        <translation>অবস্থা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/StatePanel.cpp" line="13"/>
        <location filename="../../ui/panels/StatePanel.cpp" line="53"/>
        <source>Pause</source>
        <translation>বিরতি দিন</translation>
    </message>
    <message>
        <location filename="../../ui/panels/StatePanel.cpp" line="51"/>
        <source>Last round: %1</source>
        <translation>শেষ রাউন্ড: %1</translation>
    </message>
    <message>
        <location filename="../../ui/panels/StatePanel.cpp" line="53"/>
        <source>Resume</source>
        <translation>আবার চালু করুন</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::SwarmPanel</name>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="20"/>
        <source>Swarm</source>
        <translation>সোয়ার্ম</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="32"/>
        <source>loss</source>
        <translation>loss</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="33"/>
        <source>global step</source>
        <translation>সামগ্রিক ধাপ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="35"/>
        <source>loss (nats)</source>
        <translation>loss (ন্যাট)</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="44"/>
        <source>Global step</source>
        <translation>সামগ্রিক ধাপ</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="45"/>
        <source>Toward the next step</source>
        <translation>পরের ধাপের অগ্রগতি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="46"/>
        <source>Next step in</source>
        <translation>পরের ধাপ আসতে বাকি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="47"/>
        <source>Peers</source>
        <translation>পিয়ার</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="48"/>
        <source>Swarm speed</source>
        <translation>সোয়ার্মের গতি</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="62"/>
        <source>%1 samples: target of %2 reached</source>
        <translation>%1টি নমুনা: %2-এর লক্ষ্য পূরণ হয়েছে</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="63"/>
        <source>%1 of %2 samples</source>
        <translation>%2টির মধ্যে %1টি নমুনা</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="64"/>
        <source>now</source>
        <translation>এখনই</translation>
    </message>
    <message>
        <location filename="../../ui/panels/SwarmPanel.cpp" line="66"/>
        <source>%1 samples/s</source>
        <translation>%1 নমুনা/সে.</translation>
    </message>
</context>
<context>
    <name>dedloc::ui::TrayController</name>
    <message>
        <location filename="../../ui/TrayController.cpp" line="16"/>
        <source>Pause</source>
        <translation>বিরতি দিন</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="17"/>
        <source>Resume</source>
        <translation>আবার চালু করুন</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="18"/>
        <source>Pause for 1 hour</source>
        <translation>১ ঘণ্টার জন্য বিরতি</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="19"/>
        <source>Pause until tomorrow</source>
        <translation>আগামীকাল পর্যন্ত বিরতি</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="21"/>
        <source>Show window</source>
        <translation>উইন্ডো দেখান</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="22"/>
        <source>Quit</source>
        <translation>প্রস্থান</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="74"/>
        <source>DeDLOC: %1</source>
        <translation>DeDLOC: %1</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="97"/>
        <source>DeDLOC keeps training</source>
        <translation>DeDLOC প্রশিক্ষণ চালিয়ে যাচ্ছে</translation>
    </message>
    <message>
        <location filename="../../ui/TrayController.cpp" line="98"/>
        <source>The app runs in the tray. Right-click the icon to pause or quit.</source>
        <translation>অ্যাপটি ট্রেতে চলছে। বিরতি দিতে বা বন্ধ করতে আইকনে ডান-ক্লিক করুন।</translation>
    </message>
</context>
</TS>
